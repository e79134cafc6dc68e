"""The keyed pieces the SQL macros of :func:`polars_ppdm.dp_group_by` need, as DuckDB UDFs.

The macros ``ppdm_dp_count``, ``ppdm_dp_count_units``, ``ppdm_dp_sum``, ``ppdm_dp_avg``,
``ppdm_dp_var_pop``, ``ppdm_dp_stddev_pop`` and ``ppdm_dp_percentile_cont``
(``sql/dp_group_by.sql``) do the contribution bounding, the grid sums and the joins in
SQL; these UDFs give them the same 64-bit words and noise as the Polars code, so the
releases are the same bits:

* ``ppdm_bits(x BIGINT) -> UBIGINT``, ``ppdm_double_bits(x DOUBLE) -> UBIGINT`` and
  ``ppdm_string_bits(secret, x VARCHAR) -> UBIGINT`` -- the 64-bit pattern of an integer
  (two's complement), of a float64, and of a string group value (keyed HMAC); NULL gives
  the null pattern (:data:`polars_ppdm.kernels.dp_noise.NULL_BITS`);
* ``ppdm_word(secret, stream, prev UBIGINT, bits UBIGINT) -> UBIGINT`` -- one link of
  the keyed chains (word 0 of AES(secret, stream || prev XOR bits)): the contribution
  words of :func:`polars_ppdm.kernels.dp_noise.contribution_words` and the group words of
  :func:`polars_ppdm.dp.group_by.group_words`;
* ``ppdm_release_noise(secret, release VARCHAR, digest UBIGINT, stream VARCHAR, key UBIGINT,
  scale DOUBLE) -> BIGINT`` -- exact two-sided geometric noise in a release's own key:
  :func:`~polars_ppdm.kernels.release_key.release_key` of (secret, release, digest), the
  digest of the release's statistics computed by the macro in SQL (the same sum of keyed
  words as :func:`~polars_ppdm.kernels.release_key.table_digest`), so a release over
  other data never repeats its noise; guessable secrets are refused;
* ``ppdm_release_gaussian(secret, release VARCHAR, digest UBIGINT, stream VARCHAR, key
  UBIGINT, sigma DOUBLE) -> BIGINT`` -- the same in the Gaussian mechanism: exact
  discrete Gaussian noise of ``sigma = l2 / sqrt(2 rho)``
  (:func:`~polars_ppdm.kernels.dp_noise.discrete_gaussian`) under the same release key,
  as :class:`~polars_ppdm.dp.mechanism.Mechanism` draws it for ``mechanism="gaussian"``;
  sigma must lie in [2^-7, 2^50];
* ``ppdm_grid(row_bound DOUBLE) -> DOUBLE`` -- the power-of-two grid of real values
  (:func:`~polars_ppdm.kernels.dp_noise.grid_of`);
* ``ppdm_selection_threshold(epsilon, delta, max_groups) -> BIGINT`` -- partition
  selection's threshold (:func:`polars_ppdm.dp.group_by.selection_threshold`);
* ``ppdm_dp_square_shape(low DOUBLE, high DOUBLE) -> BIGINT[]`` -- ``[k, middle]`` of a
  variance's rounded squares ``(u^2 + 2^(k-1)) // 2^k - middle`` over its grid values
  ``u`` (:meth:`~polars_ppdm.dp.aggregates.DPAggregate.square_shift` and
  ``square_middle`` of ``dp.variance`` with those bounds);
* ``ppdm_values_digest(secret, word UBIGINT, values DOUBLE[]) -> UBIGINT`` -- per group,
  the order-free keyed digest of the values a quantile ranks (the release's digest holds
  it, so a value changed anywhere redraws the noise);
* ``ppdm_dp_release_label(spec VARCHAR) -> VARCHAR`` and ``ppdm_dp_histogram_label(col,
  low, high, bins, mechanism, epsilon, rho) -> VARCHAR`` -- the label of a macro's release
  key, the whole query (:attr:`~polars_ppdm.dp.group_by.GroupByRequest.key_label`,
  :attr:`~polars_ppdm.dp.histogram.HistogramRequest.key_label`), made from Polars' own
  request for the same arguments: the ``release`` argument of ``ppdm_release_noise``;
* ``ppdm_dp_release_value(secret, spec VARCHAR, digest UBIGINT, word UBIGINT, rows
  BIGINT, grid_sum BIGINT, squares BIGINT, values DOUBLE[]) -> DOUBLE`` -- a variance,
  std or quantile per group from its bounded statistics: ``spec`` (JSON, one constant per
  query, made by the macro) holds the call's parameters, from which
  :func:`~polars_ppdm.dp.group_by.check_group_by` makes the very request Polars makes,
  and the value is that of Polars' own code (``variance_of``, ``quantile_of`` over a ``GroupDraws``) under the
  release key of (secret, ``dp_group_by(<group>)``, digest).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
from duckdb.func import ARROW, SPECIAL

from polars_ppdm.dp import aggregates as dp
from polars_ppdm.dp.aggregates import DPAggregate
from polars_ppdm.dp.group_by import (
    GroupByRequest,
    GroupDraws,
    candidate_codes,
    check_group_by,
    quantile_of,
    selection_threshold,
    string_bits,
    values_digests,
    variance_of,
)
from polars_ppdm.dp.histogram import check_histogram
from polars_ppdm.duckdb._shared import constant, one_array, secret_of
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import (
    NULL_BITS,
    check_gaussian_sigma,
    discrete_gaussian,
    discrete_laplace,
    grid_of,
)
from polars_ppdm.kernels.prf import first_words, stream_id
from polars_ppdm.kernels.release_key import release_key
from polars_ppdm.secret import require_strong_secret

__all__ = ["register_group_by_udfs"]


def _with_nulls(bits: np.ndarray, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if arr.null_count:
        nulls = pl.Series(arr).is_null().to_numpy()
        bits = np.where(nulls, NULL_BITS, bits)
    return pa.array(bits, type=pa.uint64())


def _bits_udf(x):
    values = pl.Series(x).fill_null(0).cast(pl.Int64).to_numpy().view(np.uint64)
    return _with_nulls(values, x)


def _double_bits_udf(x):
    values = np.ascontiguousarray(pl.Series(x).fill_null(0.0).cast(pl.Float64).to_numpy()).view(np.uint64)
    return _with_nulls(values, x)


def _string_bits_udf(secret, x):
    if len(x) == 0:
        return pa.array([], type=pa.uint64())
    key = secret_of(secret, "ppdm_string_bits").key
    return _with_nulls(string_bits(key, pl.Series(x).cast(pl.String).fill_null("")), x)


def _word_udf(secret, stream, prev, bits):
    func = "ppdm_word"
    if len(prev) == 0:
        return pa.array([], type=pa.uint64())
    key, label = secret_of(secret, func).key, str(constant(stream, "stream", func))
    chained = _words(prev) ^ _words(bits)
    return pa.array(first_words(key, stream_id(label), chained), type=pa.uint64())


def _words(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A UBIGINT argument as uint64, a view of the Arrow buffer where it has no NULL (the
    macros' words never do): per 2048-row vector a Polars round trip cost as much as the
    AES words themselves."""
    arr = one_array(arr)
    return arr.to_numpy() if arr.null_count == 0 else pl.Series(arr).to_numpy()


def _release_of(release: Any, func: str) -> tuple[str, str]:
    """The label of a release's key (the macros pass the whole query's, from
    ``ppdm_dp_release_label``) and the function it names, for messages."""
    text = str(constant(release, "release", func))
    name = text.split("?")[0].split("(")[0]
    return text, _SQL_NAMES.get(name, name)


#: What the SQL user called, for messages: the release labels name the Polars function.
_SQL_NAMES = {"dp_group_by": "ppdm_dp_count/sum/avg/... (this DP macro)", "dp_histogram": "ppdm_dp_histogram"}


def _release_noise_udf(secret, release, digest, stream, key, scale):
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    release, func = _release_of(release, "ppdm_release_noise")
    resolved = require_strong_secret(secret_of(secret, func), func, sql=True)
    label = str(constant(stream, "stream", func))
    scale = constant(scale, "scale", func)
    if not (isinstance(scale, float) and 0 < scale < float("inf")):
        msg = f"The 'scale' argument of ppdm_release_noise must be a finite float > 0. Got {scale!r} instead."
        raise InvalidParameterError(msg)
    own_key = release_key(resolved.key, release, int(constant(digest, "digest", func)))
    return pa.array(discrete_laplace(own_key, stream_id(label), pl.Series(key).to_numpy(), scale))


def _release_gaussian_udf(secret, release, digest, stream, key, sigma):
    """``ppdm_release_noise`` of the Gaussian mechanism: the same release key, discrete
    Gaussian noise of ``sigma`` (:meth:`polars_ppdm.dp.mechanism.Mechanism.draw`)."""
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    release, func = _release_of(release, "ppdm_release_gaussian")
    resolved = require_strong_secret(secret_of(secret, func), func, sql=True)
    label = str(constant(stream, "stream", func))
    sigma = constant(sigma, "sigma", func)
    if not isinstance(sigma, float):
        msg = f"The 'sigma' argument of ppdm_release_gaussian must be a finite float > 0. Got {sigma!r} instead."
        raise InvalidParameterError(msg)
    check_gaussian_sigma(sigma, func)
    own_key = release_key(resolved.key, release, int(constant(digest, "digest", func)))
    return pa.array(discrete_gaussian(own_key, stream_id(label), pl.Series(key).to_numpy(), sigma))


def _grid_udf(row_bound):
    bound = float(constant(row_bound, "row_bound", "ppdm_grid"))
    return pa.array([grid_of(bound, "ppdm_grid")] * len(row_bound), type=pa.float64())


def _selection_threshold_udf(epsilon, delta, max_groups):
    func = "ppdm_selection_threshold"
    threshold = selection_threshold(
        float(constant(epsilon, "epsilon", func)),
        float(constant(delta, "delta", func)),
        int(constant(max_groups, "max_groups", func)),
    )
    return pa.array([threshold] * len(epsilon), type=pa.int64())


def _square_shape_udf(low, high):
    func = "ppdm_dp_square_shape"
    made = dp.variance("value", bounds=(constant(low, "low", func), constant(high, "high", func)))
    shape = [made.square_shift(func), made.square_middle(func)]
    return pa.array([shape] * len(low), type=pa.list_(pa.int64()))


def _values_digest_udf(secret, word, values):
    if len(word) == 0:
        return pa.array([], type=pa.uint64())
    key = secret_of(secret, "ppdm_values_digest").key
    return pa.array(values_digests(pl.Series(values), pl.Series(word).to_numpy(), key), type=pa.uint64())


#: The SQL macro of each aggregate kind, for messages (sql/dp_group_by.sql).
_MACROS = {
    "count": "ppdm_dp_count",
    "count_units": "ppdm_dp_count_units",
    "sum": "ppdm_dp_sum",
    "mean": "ppdm_dp_avg",
    "variance": "ppdm_dp_var_pop",
    "std": "ppdm_dp_stddev_pop",
    "quantile": "ppdm_dp_percentile_cont",
}


@functools.lru_cache(maxsize=16)
def _release_request(spec: str) -> tuple[GroupByRequest, DPAggregate]:
    """The request Polars makes for the one aggregate of a macro call (``spec``: its
    parameters as JSON), checked by :func:`check_group_by` over a schema of the group,
    value and unit columns (nothing is read from the data)."""
    p = json.loads(spec)
    column, bounds, kind = p["column"], (p["low"], p["high"]), p["kind"]
    if kind in ("count", "count_units"):
        made = getattr(dp, kind)()
    elif kind == "quantile":
        made = dp.quantile(column, p["q"], bounds=bounds, candidates=p["candidates"])
    else:
        made = getattr(dp, kind)(column, bounds=bounds)
    # The group column last: an integer group column may be the value column too.
    schema = pl.Schema(
        {
            **({column: pl.Float64} if column is not None else {}),
            **({p["unit"]: pl.Int64} if p["unit"] else {}),
            p["group"]: pl.Int64,
        }
    )
    request = check_group_by(
        schema,
        p["group"],
        made,
        epsilon=p["epsilon"],
        privacy_unit=p["unit"],
        max_groups_contributed=p["max_groups"],
        max_rows_per_group=p["max_rows"],
        public_groups=None if p["delta"] is not None else pl.DataFrame(schema={p["group"]: pl.Int64}),
        delta=p["delta"],
        mechanism=p["mechanism"],
        rho=p["rho"],
    )
    assert isinstance(made, DPAggregate)
    return request, made


def _release_label_udf(spec):
    """The label of the release's key (:attr:`GroupByRequest.key_label`) of a macro's query
    (``spec``: its parameters as JSON): the same Python as Polars' makes it."""
    if len(spec) == 0:
        return pa.array([], type=pa.string())
    request, _ = _release_request(str(constant(spec, "spec", "ppdm_dp_release_label")))
    return pa.array([request.key_label] * len(spec), type=pa.string())


def _histogram_label_udf(col, low, high, bins, mechanism, epsilon, rho):
    """The label of the key of ``ppdm_dp_histogram``'s release
    (:attr:`~polars_ppdm.dp.histogram.HistogramRequest.key_label`): Polars' request for
    the same arguments (each row its own unit), made by the same Python."""
    func = "ppdm_dp_histogram"
    if len(col) == 0:
        return pa.array([], type=pa.string())
    column = str(constant(col, "col", func))
    request = check_histogram(
        pl.Schema({column: pl.Float64}),
        column,
        bounds=(constant(low, "low", func), constant(high, "high", func)),
        bins=constant(bins, "bins", func),
        epsilon=constant(epsilon, "epsilon", func, optional=True),
        key=None,
        max_contributions=1,
        mechanism=constant(mechanism, "mechanism", func),
        rho=constant(rho, "rho", func, optional=True),
    )
    return pa.array([request.key_label] * len(col), type=pa.string())


def _release_value_udf(secret, spec, digest, word, rows, grid_sum, squares, values):
    func = "ppdm_dp_release_value"
    if len(word) == 0:
        return pa.array([], type=pa.float64())
    request, a = _release_request(str(constant(spec, "spec", func)))
    macro = _MACROS.get(a.kind, request.label.split("(")[0])
    resolved = require_strong_secret(secret_of(secret, macro), macro, sql=True)
    key = release_key(resolved.key, request.key_label, int(constant(digest, "digest", func)))
    h = request.helpers
    if a.kind == "quantile":
        assert a.candidates is not None
        groups = pl.DataFrame({"v": pl.Series(values)}).select(
            pl.col("v")
            .list.eval(
                pl.element().map_batches(
                    lambda x: pl.Series(candidate_codes(x.to_numpy(), np.asarray(a.candidates))),
                    return_dtype=pl.Int64,
                )
            )
            .alias(h.ranks[a.name])
        )
        groups = groups.select(pl.col(h.ranks[a.name]).list.eval(pl.element().value_counts(name="n")))
    else:
        groups = pl.DataFrame(
            {
                h.rows: pl.Series(rows),
                h.grid[a.name]: pl.Series(grid_sum),
                h.squares[a.name]: pl.Series(squares),
            }
        )
    # The very draws Polars' release makes (dp.group_by.GroupDraws), over the macro's groups.
    draws = GroupDraws(request, key, pl.Series(word).to_numpy(), groups)
    value = quantile_of(a, draws) if a.kind == "quantile" else variance_of(a, draws)[0]
    return pa.array(value, type=pa.float64())


def register_group_by_udfs(con: duckdb.DuckDBPyConnection) -> None:
    """Register the UDFs above on ``con`` (:func:`polars_ppdm.duckdb.register` calls it)."""
    T = duckdb.sqltypes
    arrow: dict[str, Any] = {"type": ARROW, "null_handling": SPECIAL}
    con.create_function("ppdm_bits", _bits_udf, [T.BIGINT], T.UBIGINT, **arrow)
    con.create_function("ppdm_double_bits", _double_bits_udf, [T.DOUBLE], T.UBIGINT, **arrow)
    con.create_function("ppdm_string_bits", _string_bits_udf, [T.VARCHAR, T.VARCHAR], T.UBIGINT, **arrow)
    con.create_function(
        "ppdm_word", _word_udf, [T.VARCHAR, T.VARCHAR, T.UBIGINT, T.UBIGINT], T.UBIGINT, **arrow
    )
    con.create_function(
        "ppdm_release_noise",
        _release_noise_udf,
        [T.VARCHAR, T.VARCHAR, T.UBIGINT, T.VARCHAR, T.UBIGINT, T.DOUBLE],
        T.BIGINT,
        **arrow,
    )
    con.create_function(
        "ppdm_release_gaussian",
        _release_gaussian_udf,
        [T.VARCHAR, T.VARCHAR, T.UBIGINT, T.VARCHAR, T.UBIGINT, T.DOUBLE],
        T.BIGINT,
        **arrow,
    )
    con.create_function("ppdm_grid", _grid_udf, [T.DOUBLE], T.DOUBLE, **arrow)
    con.create_function(
        "ppdm_dp_square_shape", _square_shape_udf, [T.DOUBLE, T.DOUBLE], duckdb.list_type(T.BIGINT), **arrow
    )
    doubles = duckdb.list_type(T.DOUBLE)
    con.create_function(
        "ppdm_values_digest", _values_digest_udf, [T.VARCHAR, T.UBIGINT, doubles], T.UBIGINT, **arrow
    )
    con.create_function("ppdm_dp_release_label", _release_label_udf, [T.VARCHAR], T.VARCHAR, **arrow)
    con.create_function(
        "ppdm_dp_histogram_label",
        _histogram_label_udf,
        [T.VARCHAR, T.DOUBLE, T.DOUBLE, T.BIGINT, T.VARCHAR, T.DOUBLE, T.DOUBLE],
        T.VARCHAR,
        **arrow,
    )
    con.create_function(
        "ppdm_dp_release_value",
        _release_value_udf,
        [T.VARCHAR, T.VARCHAR, T.UBIGINT, T.UBIGINT, T.BIGINT, T.BIGINT, T.BIGINT, doubles],
        T.DOUBLE,
        **arrow,
    )
    con.create_function(
        "ppdm_selection_threshold",
        _selection_threshold_udf,
        [T.DOUBLE, T.DOUBLE, T.BIGINT],
        T.BIGINT,
        **arrow,
    )
