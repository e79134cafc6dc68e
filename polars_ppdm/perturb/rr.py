"""Randomized response on Polars columns: ``rr_disguise`` as an expression and on frames.

References
----------
Wen Han, *Randomization methods for privacy-preserving data mining*, master's thesis,
Zhejiang University, 2006, chapter 5 (paper 003).  W. Du, J. Z. Zhan, "Using randomized
response techniques for privacy-preserving data mining", KDD 2003.  S. Rizvi,
J. R. Haritsa, "Maintaining data privacy in association rule mining" (MASK), VLDB 2002.
"""

from __future__ import annotations

import ctypes
import functools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._design import RRDesign
from polars_ppdm._encoding import Domain, RowShape, aligned, row_keys, row_shape, with_nulls
from polars_ppdm._frame import Frame, as_lazy, like, schema_of
from polars_ppdm._validation import check_columns, check_p_or_epsilon, keep_probability
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.prf import derived_stream, stream_id
from polars_ppdm.kernels.rr import (
    disguise_codes,
    keep_decisions,
    keep_decisions_bits,
    record_words,
    whole_record_keep,
)
from polars_ppdm.perturb._plugin import plugin_errors, plugin_key_dtype, rr_boolean_plugin
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = ["disguise_series", "rr_disguise", "rr_disguise_expr", "whole_record_stream"]
_KEY_FIELD = "__ppdm_key"


def key_expr(key: str | pl.Expr | None) -> pl.Expr:
    """The row-key expression: a named column, an expression, or the row position.

    A named key keeps its name, which errors about it (null keys, wrong dtype) then show.
    """
    if key is None:
        return pl.int_range(pl.len(), dtype=pl.UInt64).alias(_KEY_FIELD)
    if isinstance(key, str):
        return pl.col(key)
    if isinstance(key, pl.Expr):
        return key
    msg = f"The 'key' parameter must be a column name, a polars expression or None. Got {type(key).__name__} instead."
    raise InvalidParameterError(msg)


def default_stream(expr: pl.Expr, func: str, prefix: str = "") -> str:
    """The stream label of an element-wise step without ``stream=``: ``prefix`` and the
    expression's output name, for a column (renamed or not).

    A computed expression (``pl.col("a") & pl.col("b")``, ``pl.col("x").clip(...)``) is
    refused: its output name is its first column's, so it would draw the coins of that
    column, and where the two are equal their releases would be equal too (which tells
    when a derived value equals its source)."""
    if not expr.meta.undo_aliases().meta.is_column():
        name = expr.meta.output_name(raise_if_undetermined=False)
        msg = (
            f"{func} of the computed expression {str(expr)[:80]!r} needs stream='...': without it the stream "
            "would be its output name"
            + (f" {name!r}, the stream of the column {name!r} itself" if name else "")
            + ", and the two releases would share coins wherever their values are equal. Name a stream of its own."
        )
        raise InvalidParameterError(msg)
    return prefix + expr.meta.output_name()


def domain_stream(stream: int, domain: Domain) -> int:
    """The stream of a column's coins under its domain: a declared domain's order (its
    categories as text, in order) derives it, as the coins are keyed by the value's code,
    its position in that order.  Two releases of one column with the categories in
    another order then draw independent coins; sharing them, a value at the same
    position in both shared its keep coin and its replacement, and some pairs of outputs
    were impossible for some truths.  The binary domains (False, True) and (0, 1) keep
    the column's stream (the compiled Boolean path's bits)."""
    if domain.categories == (False, True):  # also (0, 1)
        return stream
    return derived_stream(stream, "categories/" + json.dumps([str(c) for c in domain.categories]))


def whole_record_stream(columns: Sequence[str]) -> str:
    """Default stream label of the one-coin-per-record disguise of ``columns``."""
    return "whole_record/" + "\x1f".join(columns)


def disguise_series(
    values: pl.Series,
    keys: pl.Series,
    *,
    p: float | None,
    epsilon: float | None,
    categories: Sequence[Any] | None,
    secret: bytes,
    stream: int,
    func: str,
    shape: RowShape | None = None,
) -> pl.Series:
    values, keys = aligned(values, keys, func, shape)
    domain = Domain.of(values.dtype, categories, func=func, column=values.name)
    keep = keep_probability(p, epsilon, domain.k, func, column=values.name)
    if values.dtype == pl.Boolean:
        return _disguise_boolean(values, keys, keep=keep, secret=secret, stream=stream, func=func)
    stream = domain_stream(stream, domain)
    codes, valid = domain.encode(values, func=func)
    row_key = row_keys(keys, secret=secret, func=func, required_rows=valid)
    out = disguise_codes(codes, domain.k, keep, secret, stream, row_key)
    return domain.decode(out, valid, name=values.name)


def _disguise_boolean(
    values: pl.Series, keys: pl.Series, *, keep: float, secret: bytes, stream: int, func: str
) -> pl.Series:
    """The hot path for a Boolean column: the kernel draws only the keep decisions (at the
    blocks keyed by unit and value) and Polars applies them on its bitmaps (``value ==
    kept`` negates where not kept; a null stays null).

    Same bits as :func:`polars_ppdm.kernels.rr.disguise_codes` (a flip where word 0 is
    at or above the Bernoulli threshold); null rows draw as False and do not use it.
    The values reach the kernel as Polars' own bitmap (:func:`_value_bits`), not unpacked
    to a byte per row.
    """
    filled = values.fill_null(False) if values.null_count() else values
    # Which rows need a key: row_keys reads it only when the key column has nulls.
    valid = values.is_not_null().to_numpy() if values.null_count() and keys.null_count() else None
    row_key = row_keys(keys, secret=secret, func=func, required_rows=valid)
    bitmap = _value_bits(filled)
    if bitmap is not None:
        kept = keep_decisions_bits(*bitmap, keep, secret, stream, row_key)
    else:
        kept = keep_decisions(filled.to_numpy(), keep, secret, stream, row_key)
    out = (values == pl.Series(kept)).alias(values.name)
    # Zeros under the nulls: the bit there would be a keyed coin (see with_nulls).
    return with_nulls(out, values.is_not_null().to_numpy()) if values.null_count() else out


class _ArrowSchema(ctypes.Structure):
    """``struct ArrowSchema`` of the Arrow C data interface."""


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))),
    ("private_data", ctypes.c_void_p),
]


class _ArrowArray(ctypes.Structure):
    """``struct ArrowArray`` of the Arrow C data interface."""


_ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowArray))),
    ("private_data", ctypes.c_void_p),
]


def _value_bits(values: pl.Series) -> tuple[np.ndarray, int] | None:
    """The value bitmap of a Boolean Series (uint8, least significant bit first) and the
    bit of its first row, copied from Polars' own buffer through the Arrow C data
    interface (no pyarrow); None where Polars does not export a plain Boolean array.

    ``Series.to_numpy`` unpacks a Boolean column to one byte per row at ~1.4 ns a row;
    the bitmap is an eighth of a byte per row, and the kernel spreads it chunk by chunk.
    Under a null the bit is whatever Polars stores.
    """
    if values.n_chunks() > 1:
        values = values.rechunk()
    array, schema = _ArrowArray(), _ArrowSchema()
    try:
        values._export_arrow_to_c(ctypes.addressof(array), ctypes.addressof(schema))
    except Exception:
        return None
    try:
        if schema.format != b"b" or array.n_buffers != 2 or array.length != len(values):
            return None
        first = array.offset >> 3
        nbytes = ((array.offset + array.length + 7) >> 3) - first
        if nbytes == 0:
            return np.empty(0, dtype=np.uint8), 0
        address = array.buffers[1]
        if not address:
            return None
        raw = (ctypes.c_uint8 * nbytes).from_address(address + first)
        return np.frombuffer(raw, dtype=np.uint8).copy(), array.offset & 7
    finally:
        if array.release:
            array.release(ctypes.byref(array))
        if schema.release:
            schema.release(ctypes.byref(schema))


def rr_disguise_expr(
    expr: pl.Expr,
    *,
    p: float | None = None,
    epsilon: float | None = None,
    secret: SecretLike = None,
    key: str | pl.Expr | None = None,
    categories: Sequence[Any] | None = None,
    stream: str | None = None,
) -> pl.Expr:
    """Disguise one column by (k-ary) randomized response; element-wise and streamable.

    Each non-null value is kept with probability ``p``; otherwise it is replaced by one of
    the other k - 1 categories, uniformly.  Nulls stay null (as every Polars expression
    keeps them); the dtype is kept.  So whether a value is missing is published as it is,
    and no epsilon bounds it: fill the nulls with a category first where missingness is
    sensitive (``ppdm run`` refuses them unless the step says ``nulls = "keep"``).

    The coin of a row is keyed by its unit (``key``), the stream and its value, as
    RAPPOR's memoisation: what is protected is each distinct value of a unit.  Each
    distinct value a unit holds in the column gets an independent epsilon-LDP release
    (``epsilon = ln(p (k - 1) / (1 - p))``); a unit with m distinct values in the column
    (over its rows, or over re-runs after its value changed) spends m x epsilon.  Re-runs
    over an unchanged value reproduce its bits (so they cannot be averaged), a changed
    value draws fresh, independent coins (so the change is not revealed), and a unit's
    rows share a coin only when their values are equal.

    Parameters
    ----------
    expr : polars.Expr
        A Boolean, 0/1 integer, Enum, Categorical or String column: each unit's own value.
        Not an aggregate (``pl.col("x").any()``): each row would draw its own copy of the
        one value, and the copies together give it away.  It is refused when the step is
        built (on Polars 1.34, which cannot tell, only where an eager query hands it over
        as one row); a literal (public) is repeated over the rows.  An aggregate already
        broadcast to every row (``.over(...)``, arithmetic with a column, ``pl.repeat``)
        cannot be told from a column of equal values: do not perturb one.
    p : float, optional
        Probability of keeping the true value, in [0, 1], not 1/k.
    epsilon : float, optional
        Local-DP epsilon instead of ``p``: ``p = e^eps / (e^eps + k - 1)``.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        The secret of the keyed randomness (see :mod:`polars_ppdm.secret`).  An int is
        guessable: for tests only.  None draws a fresh secret from the OS (not
        reproducible).
    key : str or polars.Expr, optional
        The row key (the privacy unit): rows with the same key and the same value get the
        same coin, so a re-run never re-randomises an unchanged value.  Integer or
        string.  Default: the row position in the frame the expression sees (then the
        result depends on the row order).  Inside ``.over(...)`` or ``group_by().agg``
        that frame is the group: positions restart per group and rows of different
        groups would share coins; give a key there.
    categories : sequence, optional
        The public domain of a String, Categorical or k-ary integer column, required for
        those.  It is never read off the data: a category that no row has would never be
        output, so the output would reveal which categories occur, and batches could
        disagree.  Boolean and Enum columns carry their domain in the dtype; an integer
        column without ``categories`` is binary (0/1).
    stream : str, optional
        Stream label of the draws.  Default: the column's output name, so two columns
        disguised with one secret get independent coins; required for a computed
        expression (its output name is its first column's, whose coins it would share).  In DuckDB,
        ``ppdm_rr_disguise(x, p, secret, key, 'x')`` matches the default here.

    Returns
    -------
    polars.Expr

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"id": [1, 2, 3, 4, 5, 6], "smoker": [True, False, True, None, False, False]})
    >>> out = df.with_columns(pl.col("smoker").ppdm.rr_disguise(p=0.8, secret=7, key="id"))
    >>> out["smoker"].null_count(), out.height
    (1, 6)

    A re-run over the same values reproduces the bits; a unit's changed value draws anew:

    >>> again = df.with_columns(pl.col("smoker").ppdm.rr_disguise(p=0.8, secret=7, key="id"))
    >>> again.equals(out)
    True

    References
    ----------
    Wen Han (2006), paper 003, chapter 5; Warner (1965); Du & Zhan (KDD 2003).
    """
    func = "rr_disguise"
    check_p_or_epsilon(p, epsilon, func)  # the 1/k check waits for the dtype
    if stream is None:
        stream = default_stream(expr, func)
    secret = resolve_secret(secret).key
    stream_word = stream_id(stream)
    keys = key_expr(key)
    shape = row_shape(expr, keys, func)

    def batch(inputs: Sequence[pl.Series]) -> pl.Series:
        values, keys = inputs
        return disguise_series(
            values,
            keys,
            p=p,
            epsilon=epsilon,
            categories=categories,
            secret=secret,
            stream=stream_word,
            func=func,
            shape=shape,
        )

    # Two inputs rather than a struct: a struct costs Polars about 1 ns a row to build.
    return pl.map_batches([expr, keys], batch, return_dtype=pl.dtype_of(expr), is_elementwise=True)


def _negate_where(pair: Sequence[pl.Series], *, domain: Domain, func: str) -> pl.Series:
    """Negate a binary column where the record's coin says lie."""
    values, truthful = pair
    codes, valid = domain.encode(values, func=func)
    lie = ~truthful.to_numpy()
    return domain.decode(np.bitwise_xor(codes, lie), valid, name=values.name)


def rr_disguise(
    frame: Frame,
    columns: str | Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    secret: SecretLike = None,
    key: str | None = None,
    categories: Sequence[Any] | dict[str, Sequence[Any]] | None = None,
) -> Frame:
    """Disguise several columns of a frame by randomized response.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Returned as the same type; row count and row order are kept; other columns are
        untouched.
    columns : str or sequence of str
        The columns to disguise.
    p, epsilon : float, or one per column (sequence or mapping)
        Keep probability or local-DP epsilon (exactly one).  Per-attribute mode accepts a
        different value per column (MASK); whole-record mode takes one value.  The epsilon
        is per distinct value of a unit in a column: a unit with m distinct values in a
        column (several rows, or re-runs after a change) spends m x epsilon there.
    mode : {'per_attribute', 'whole_record'}
        ``per_attribute``: an independent coin per column and row, keyed by the unit, the
        column (stream = column name) and the value: the same draws as
        :func:`rr_disguise_expr`, whose docstring says what is protected (each distinct
        value of a unit gets an independent epsilon-LDP release; m distinct values spend
        m x epsilon).  ``whole_record``: one coin per row, keyed by the unit and the
        record's values in ``columns`` (a changed record draws anew); when it says lie,
        every (binary) column of the row is negated (Du & Zhan's related-question model,
        paper 003).  **Whole-record disguise with two or more columns is not
        epsilon-LDP for any finite epsilon**: the XOR of two released columns equals
        their true XOR, so e.g. P(released 000 | true 001) = 0.  It keeps correlations
        estimable from the pattern/complement pairs, and protects only the record's
        "polarity"; use it where the paper's method is wanted, not for a DP guarantee.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        See :func:`rr_disguise_expr`.
    key : str, optional
        Row-key column (integer or string); default the row position.
    categories : sequence or mapping of column -> sequence, optional
        Public domains of String, Categorical and k-ary integer columns.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"id": range(6), "a": [1, 0, 1, 1, 0, 0], "b": [True, True, False, None, False, True]})
    >>> out = ppdm.rr_disguise(df, ["a", "b"], p=0.9, mode="whole_record", secret=1, key="id")
    >>> out.columns, out.height, out["b"].null_count()
    (['id', 'a', 'b'], 6, 1)

    References
    ----------
    Wen Han (2006), paper 003, chapter 5; Du & Zhan (KDD 2003); Rizvi & Haritsa (VLDB 2002).
    """
    func = "rr_disguise"
    schema = schema_of(frame, func)
    # Every parameter is checked here, before any data is read.
    design = RRDesign(schema, columns, p=p, epsilon=epsilon, mode=mode, categories=categories, func=func)
    if key is not None:
        check_columns([key], list(schema), func, name="key")
    # A fresh secret (None) serves one call: the compiled plugin would keep it registered
    # for the life of the process, so that path stays with map_batches (same bits).
    fresh = secret is None
    secret = resolve_secret(secret)
    cols = design.columns
    if mode == "per_attribute":
        exprs = []
        for c in cols:
            expr = None if fresh else _compiled_boolean(c, schema, key, p=design.p[c], secret=secret.key)
            if expr is None:
                expr = rr_disguise_expr(
                    pl.col(c), p=design.p[c], secret=secret, key=key, categories=design.domains[c].categories
                )
            exprs.append(expr)
        with plugin_errors():
            return like(frame, as_lazy(frame).with_columns(exprs))
    coin = _whole_record_coin(
        secret.key, whole_record_stream(cols), design.p[cols[0]], key, cols, [design.domains[c] for c in cols]
    )
    negated = [
        pl.map_batches(
            [pl.col(c), coin],
            functools.partial(_negate_where, domain=design.domains[c], func=func),
            return_dtype=pl.dtype_of(c),
            is_elementwise=True,
        ).alias(c)
        for c in cols
    ]
    return like(frame, as_lazy(frame).with_columns(negated))


def _compiled_boolean(
    column: str, schema: pl.Schema, key: str | None, *, p: float, secret: bytes
) -> pl.Expr | None:
    """The compiled plugin's expression for a Boolean column with an integer key (or the
    row position), the same bits as :func:`rr_disguise_expr`; None where it does not
    serve (other dtypes, or no compiled kernels), and the caller takes that path."""
    key_dtype = pl.UInt64 if key is None else schema[key]
    if schema[column] != pl.Boolean or not plugin_key_dtype(key_dtype):
        return None
    keep = keep_probability(p, None, 2, "rr_disguise", column=column)
    return rr_boolean_plugin(
        pl.col(column), key_expr(key), keep=keep, secret=secret, stream=stream_id(column)
    )


def _whole_record_coin(
    secret: bytes,
    stream: str,
    keep: float,
    key: str | None,
    columns: Sequence[str],
    domains: Sequence[Domain],
) -> pl.Expr:
    """Boolean expression: True where the record is sent truthfully; one coin per record,
    keyed by the unit and the record's values (:func:`polars_ppdm.kernels.rr.whole_record_keep`)."""
    word = stream_id(stream)

    def coin(inputs: Sequence[pl.Series]) -> pl.Series:
        keys, *values = inputs
        encoded = [domain.encode(v, func="rr_disguise") for v, domain in zip(values, domains, strict=True)]
        records = record_words([codes for codes, _ in encoded], [valid for _, valid in encoded])
        kept = whole_record_keep(secret, word, row_keys(keys, secret=secret, func="rr_disguise"), records, keep)
        return pl.Series("__ppdm_truthful", kept)

    return pl.map_batches(
        [key_expr(key), *(pl.col(c) for c in columns)], coin, return_dtype=pl.Boolean, is_elementwise=True
    ).alias("__ppdm_truthful")


def whole_record_keep_series(
    values: Sequence[pl.Series], keys: pl.Series, *, keep: float, secret: bytes, stream: int, func: str
) -> np.ndarray:
    """The whole-record coins of a batch given as Series (the DuckDB UDF's path): True
    where the record is sent truthfully."""
    domains = [Domain.of(v.dtype, None, func=func, column=v.name) for v in values]
    encoded = [domain.encode(v, func=func) for v, domain in zip(values, domains, strict=True)]
    records = record_words([codes for codes, _ in encoded], [valid for _, valid in encoded])
    return whole_record_keep(secret, stream, row_keys(keys, secret=secret, func=func), records, keep)
