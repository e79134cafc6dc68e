"""ECDF resampling with rank re-linking on Polars frames (paper 000).

References
----------
Li, Wang, Su, "ECDF-based data perturbation with rank re-linking", *Computer
Engineering* 2012 (paper 000).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

from polars_ppdm._encoding import row_keys, with_nulls
from polars_ppdm._frame import Frame, as_lazy, like, map_whole, schema_of
from polars_ppdm._validation import (
    check_bool,
    check_choice,
    check_columns,
    check_int,
    check_numeric,
    per_column,
)
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import (
    Workspace,
    draw_sample,
    ranked_cdf,
    relinked_sample,
    shuffle_order,
    smoothed_cdf,
)
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.release_key import release_key, table_digest
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = ["column_key", "column_label", "ecdf_resample", "ecdf_stream"]

_FUNC = "ecdf_resample"
LINKS = ("rank", "none")
_MAX_BINS = 10_000_000


def ecdf_stream(column: str) -> str:
    """Stream label of the generated sample of ``column`` (ties use ``+ "/ties"``; the
    row order of ``shuffle=True``, by the first column, ``+ "/shuffle"``)."""
    return "ecdf_resample/" + column


def column_label(column: str, bins: int) -> str:
    """The label of one column's resample in its key (:func:`column_key`)."""
    return f"{ecdf_stream(column)}/bins={int(bins)}"


def column_key(secret: bytes, column: str, bins: int, values: np.ndarray) -> bytes:
    """The AES key of one column's resample: the secret's release key
    (:func:`polars_ppdm.kernels.release_key.release_key`) of :func:`column_label` and the
    keyed, order-free digest of the column's non-null values (float64, -0.0 as 0.0).

    Every draw of the column (the sample, the ties, the shuffle) is keyed by its data: the
    same values reproduce the release bit for bit, and a changed value draws a fresh
    sample.  Under one key for all data, two nights one value apart released the same
    values outside the span between the value's old and new bins, which showed both.

    Examples
    --------
    >>> a = column_key(bytes(16), "x", 10, np.array([1.0, 2.0, 3.0]))
    >>> a == column_key(bytes(16), "x", 10, np.array([3.0, 1.0, 2.0])), a == column_key(bytes(16), "x", 10, np.array([1.0, 2.0, 4.0]))
    (True, False)
    """
    return release_key(secret, column_label(column, bins), table_digest(secret, [values]))


def _check_bins(bins: int | Sequence[int] | Mapping[str, int], cols: list[str]) -> dict[str, int]:
    spread = per_column("bins", bins, cols, _FUNC)
    for column, b in spread.items():
        # The cut points and counts are arrays of bins + 1: 10^9 bins would exhaust memory.
        check_int(
            "bins",
            b,
            _FUNC,
            low=2,
            high=_MAX_BINS,
            column=column,
            why=" (equal-width intervals between min and max)",
        )
    return {c: int(b) for c, b in spread.items()}


# The refusals of a column's values, the same words on Polars and Spark (and in the SQL
# macro's wording): what is wrong and what to do, never a count, a value, the minimum or
# the maximum of the data (docs/privacy-model.md, "What an error may say").
def not_finite_message(column: str) -> str:
    return (
        f"The column {column!r} of {_FUNC} holds NaN or infinite values; they have no place on the ECDF. "
        "Replace them or make them null (nulls stay null and are left out of the ECDF)."
    )


def too_few_message(column: str) -> str:
    return (
        f"The column {column!r} of {_FUNC} needs at least 2 non-null values to build an ECDF, and has "
        "fewer; leave it out of the release, or release more rows."
    )


def constant_message(column: str) -> str:
    return (
        f"The column {column!r} of {_FUNC} is constant (all its non-null values are equal): its ECDF is "
        "that value, and releasing it hides nothing. Leave it out of the release."
    )


def too_wide_message(column: str) -> str:
    return (
        f"The column {column!r} of {_FUNC} has a range (its maximum minus its minimum) beyond float64 "
        "(the cut points would be NaN); rescale the column first."
    )


def _finite_values(series: pl.Series) -> tuple[np.ndarray, np.ndarray | None, float, float]:
    """Non-null values as float64, the validity mask (None without nulls), their minimum
    and their maximum."""
    valid = series.is_not_null().to_numpy() if series.null_count() else None
    values = series.drop_nulls().cast(pl.Float64).to_numpy()
    # The minimum or the maximum is NaN or infinite when any value is (no n-sized temporary).
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 0.0)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InvalidParameterError(not_finite_message(series.name))
    if len(values) < 2:
        raise InvalidParameterError(too_few_message(series.name))
    return values, valid, low, high


def rounded_into(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """``round_integers``: released floats rounded into an integer ``dtype``, clipped to the
    floats that dtype holds.  A released value lies within the column's range, but as a
    float its maximum may round up past the dtype's (2^64 - 1 is 2^64 as a float64): the
    cast would then fail with a message quoting the values."""
    bits = _INTEGER_BITS[dtype.base_type()]
    signed = dtype.is_signed_integer()
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    top = float(high)
    if int(top) > high:  # the float nearest the maximum is above it
        top = float(np.nextafter(top, -math.inf))
    return expr.round().clip(float(low), top).cast(dtype)


_INTEGER_BITS = {
    getattr(pl, f"{kind}{bits}"): bits
    for kind in ("Int", "UInt")
    for bits in (8, 16, 32, 64, 128)
    if hasattr(pl, f"{kind}{bits}")
}


def _with_nulls(values: np.ndarray, valid: np.ndarray | None, name: str) -> pl.Series:
    """Float64 Series of the non-null rows' ``values``, nulls where ``valid`` is False."""
    if valid is None:
        return pl.Series(name, values, dtype=pl.Float64)
    full = np.zeros(len(valid), dtype=np.float64)
    full[valid] = values
    return with_nulls(pl.Series(name, full, dtype=pl.Float64), valid)


def _workers(columns: int) -> int:
    """Threads for ``columns`` columns: no more than Polars' own pool (``POLARS_MAX_THREADS``
    caps both), nor than the columns."""
    return max(1, min(columns, pl.thread_pool_size()))


def ecdf_resample(
    frame: Frame,
    columns: str | Sequence[str],
    *,
    bins: int | Sequence[int] | Mapping[str, int] = 100,
    secret: SecretLike = None,
    key: str | None = None,
    link: str = "rank",
    shuffle: bool = False,
    round_integers: bool = False,
) -> Frame:
    """Replace numeric columns by draws from their smoothed ECDF, re-linked by rank.

    For each column, exactly as paper 000: ``bins + 1`` equal-width cut points from min
    to max; the count of the minimum (a point mass) and of each interval, zero counts
    set to 1; a piecewise-linear CDF; n values drawn by inverse transform; then the row
    whose original value has rank r gets the r-th smallest generated value.  The r-th
    smallest is drawn directly, in rank order, from the keyed randomness at keys 0 .. r
    (exponential spacings, :mod:`polars_ppdm.kernels.spacings`: no sort of the sample),
    so the result depends on neither batches nor engine.  Columns not named stay with
    their row.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Returned as the same type.  The whole table is one sample: a lazy plan runs this
        step on all its rows at once (an ECDF and ranks are global).
    columns : str or sequence of str
        Numeric columns to resample; they come back as Float64.
    bins : int, or one per column (sequence or mapping)
        Equal-width intervals between min and max, from 2 to 10 million (the paper's
        k = bins + 1 cut points).  More bins follow the data more closely, and disclose more of it.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        The secret of the keyed randomness (see :mod:`polars_ppdm.secret`).  Each column
        draws under its own key, of the secret, its bins and its values
        (:func:`column_key`): the same values give the same release, a changed value a
        fresh sample (not one that differs only around the change).
    key : str, optional
        Row-key column (integer or string) whose PRF words break ties between equal
        original values; default the row position.  Ties are never broken by position
        alone, which would leak the input order -- except between rows that share both
        value and key (equal keys give equal words): keep the key unique per row.
    link : {'rank', 'none'}
        ``'rank'`` (the paper): every row keeps its rank in every column, so
        correlations with other columns and the label survive -- and so does the rank:
        the row with the largest income still has the largest released income (see
        :func:`polars_ppdm.audit.rank_linkage`).  ``'none'``: row i gets generated value
        i, independent of its original value: no rank disclosure, but every relation
        between columns, and with the label, is lost.
    shuffle : bool
        Publish the rows in the draw order of the first column's generated values (the
        paper's published order); rows null in that column come last.  With
        ``link='rank'`` the values are drawn in rank order, and their draw order is a
        keyed random permutation of the ranks (stream ``ecdf_stream(column) +
        "/shuffle"``); with ``link='none'`` row i holds draw i, so only the null rows
        move.  Default: keep the input row order, which links released rows to original
        rows by position -- shuffle when the original table's order is known to anyone.

    round_integers : bool
        Release integer columns rounded to the nearest integer, in their own dtype
        (default: Float64, as the paper).  For discrete data such as ages: the ECDF
        interpolates between integers, so a released 39.7 may stand for a 39 or a 40,
        and a model's threshold learnt on released data (age < 39.6) then misplaces
        every original 40; rounding restores the integer grid.  Every released value
        is then an integer of the data's range, and most rows get their own original
        value back exactly (90.9% of ages 20-80 and 95.7% of years on 100,000 Agrawal
        rows; 0.2-82% per column of the Statlog Shuttle data; measured by
        ``python benchmarks/ecdf_exact_values.py``): this discloses values, not only ranks.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        Same columns and row count; the named columns as Float64 (integer columns in
        their dtype with ``round_integers``), nulls still null.

    Notes
    -----
    The minimum of each column is released as is whenever a draw falls in the point
    mass, whose probability is the minimum's share of the column: about 1/n per draw
    for continuous data, but a common minimum comes back for about that share of rows,
    the very rows that held it (57.9% of an Agrawal commission that is 0 above a
    salary; 1.6% of ages).  Every other released value is interpolated and, for
    continuous data, almost surely new.  A constant
    column (min = max) is refused: its ECDF is the constant itself.  An empty frame gives
    an empty frame (a column with rows needs at least two non-null values).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"x1": [2, 6, 3, 9, 7], "x2": [4, 7, 1, 6, 8], "label": [0, 1, 1, 0, 0]})
    >>> out = ppdm.ecdf_resample(df, ["x1", "x2"], bins=4, secret=1)
    >>> out["label"].to_list(), out["x1"].rank().to_list() == df["x1"].rank().to_list()
    ([0, 1, 1, 0, 0], True)
    """
    schema = schema_of(frame, _FUNC)
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    bins_of = _check_bins(bins, cols)
    check_choice("link", link, LINKS, _FUNC)
    check_bool("shuffle", shuffle, _FUNC)
    if key is not None:
        check_columns([key], list(schema.names()), _FUNC, name="key")
    secret = resolve_secret(secret).key
    check_bool("round_integers", round_integers, _FUNC)
    rounded = {c: schema[c] for c in cols if round_integers and schema[c].is_integer()}
    out_schema = pl.Schema(
        {name: (rounded.get(name, pl.Float64()) if name in cols else dtype) for name, dtype in schema.items()}
    )

    local = threading.local()  # the pool's own threads: one workspace each

    def workspace(n: int, index: np.ndarray) -> Workspace:
        if getattr(local, "workspace", None) is None or local.workspace.n != n:
            local.workspace = Workspace(n, index=index)  # the row numbers shared by all threads
        return local.workspace

    def checked_values(df: pl.DataFrame, c: str) -> tuple[np.ndarray, np.ndarray | None, bytes]:
        """The column's finite values, their validity, and the key of its draws."""
        values, valid, low, high = _finite_values(df[c])
        if values[0] == low == high:
            raise InvalidParameterError(constant_message(c))
        if not np.isfinite(high - low):
            raise InvalidParameterError(too_wide_message(c))
        return values, valid, column_key(secret, c, bins_of[c], values)

    def resample_column(
        df: pl.DataFrame,
        c: str,
        keys: np.ndarray,
        index: np.ndarray,
        keep_order: bool,
        checked: tuple[np.ndarray, np.ndarray | None, bytes] | None = None,
    ) -> tuple[pl.Series, np.ndarray | None]:
        values, valid, own = checked if checked is not None else checked_values(df, c)
        stream = stream_id(ecdf_stream(c))
        if link == "none":
            cuts, cdf = smoothed_cdf(values, bins_of[c])
            sample = draw_sample(own, stream, len(values), cuts, cdf)
            return _with_nulls(sample, valid, c), np.arange(len(values))
        row_key = keys if valid is None else keys[valid]
        ws = workspace(len(values), index)
        # -0.0 counts as 0.0, in the ranks and in the ECDF.
        order, cuts, cdf = ranked_cdf(values, bins_of[c], own, stream_id(ecdf_stream(c) + "/ties"), row_key, ws)
        sample = relinked_sample(own, stream, order, cuts, cdf, ws)  # row order[r] gets value r
        return _with_nulls(sample, valid, c), (order.copy() if keep_order else None)

    def draw_order(c: str, own: bytes, n: int, index: np.ndarray) -> np.ndarray:
        """Slot s of the shuffled output holds the row of rank ``draw_order[s]`` in ``c``
        (copied out of the thread's workspace, which its next column reuses)."""
        return shuffle_order(own, stream_id(ecdf_stream(c) + "/shuffle"), n, workspace(n, index)).copy()

    def resample(df: pl.DataFrame) -> pl.DataFrame:
        if df.height == 0:  # an empty frame releases nothing: empty in, empty out
            return df.select(pl.col(name).cast(dtype) for name, dtype in out_schema.items())
        index = np.arange(df.height + 1, dtype=np.uint64)  # row numbers and draw keys, read-only
        keys = row_keys(df[key], secret=secret, func=_FUNC) if key is not None else index[:-1]
        # Columns are independent; sorting and AES release the GIL, so threads overlap.
        first = df[cols[0]]
        # The first column's values and key serve its shuffle too: taken once.
        checked = checked_values(df, cols[0]) if shuffle and link == "rank" else None
        with ThreadPoolExecutor(max_workers=_workers(len(cols))) as pool:
            slots = None
            if checked is not None:  # ranked rows in draw order; runs beside the columns
                slots = pool.submit(draw_order, cols[0], checked[2], len(checked[0]), index)
            jobs = [
                pool.submit(resample_column, df, c, keys, index, shuffle and i == 0, checked if i == 0 else None)
                for i, c in enumerate(cols)
            ]
            results = [job.result() for job in jobs]
            draws = slots.result() if slots is not None else None
        out = df.with_columns(series for series, _ in results)
        if rounded:
            out = out.with_columns(rounded_into(pl.col(c), dtype) for c, dtype in rounded.items())
        if shuffle:
            ranked = results[0][1]
            assert ranked is not None  # the first column's rows in rank order (link='none': draw order)
            rows = ranked if draws is None else ranked[draws]  # among the first column's non-null rows
            if first.null_count():  # null rows last, in input order
                valid = first.is_not_null().to_numpy()
                rows = np.concatenate((np.flatnonzero(valid)[rows], np.flatnonzero(~valid)))
            # A permutation, not a sort by a helper column, whose name could collide with a user's.
            out = out[rows]
        return out

    return like(frame, map_whole(as_lazy(frame), resample, out_schema))
