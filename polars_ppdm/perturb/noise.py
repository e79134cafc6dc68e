"""Additive random perturbation (Agrawal & Srikant 2000; paper 003, chapter 4).

Each value gets ``x + r`` with r uniform on [-scale, scale] or Normal(0, scale^2), drawn
from the keyed PRF at a block keyed by the row key (the unit), the column and the value
(:mod:`polars_ppdm.kernels.noise`), so the noise of a row does not depend on batches or
engines, stays the same while a unit's value does, and is fresh when it changes.  The noise distribution is public: the miners (distribution reconstruction,
covariance, PCA) need it -- and so does an attacker (:func:`polars_ppdm.audit.pca_noise_stripping`).

References
----------
Agrawal, Srikant, "Privacy-preserving data mining", SIGMOD 2000.  Wen Han (2006), paper
003, chapter 4.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_ppdm._encoding import aligned, row_keys, row_shape, with_nulls
from polars_ppdm._frame import Frame, as_lazy, like, schema_of
from polars_ppdm._validation import check_choice, check_columns, check_numeric, is_real, per_column
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.noise import gaussian_noise, noisy_values, uniform_noise
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.perturb._plugin import noise_plugin, plugin_errors, plugin_key_dtype
from polars_ppdm.perturb.rr import default_stream, key_expr
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = [
    "DISTRIBUTIONS",
    "add_noise",
    "add_noise_expr",
    "check_noise",
    "noise_scales",
    "noise_std",
    "noise_variances",
]

DISTRIBUTIONS = ("uniform", "gaussian")


# The largest |draw| of the kernels is 8.6 sigma (Box-Muller at u = 2^-53): a larger scale
# would overflow float64.
_MAX_SCALE = 1e307
#: Below it the grid of the released values (kernels.noise.noise_grid) is no normal float.
_MIN_SCALE = 2.0**-998


def check_noise(dist: object, scale: Any, func: str, *, allow_zero: bool = False) -> tuple[str, float]:
    """A known distribution and a finite scale > 0 (>= 0 with ``allow_zero``: a column
    that got no noise, for the miners)."""
    check_choice("dist", dist, DISTRIBUTIONS, func)
    low = 0 if allow_zero else None
    if not is_real(scale) or not (0 <= scale < math.inf) or (low is None and scale == 0):
        msg = (
            f"The 'scale' parameter of {func} must be a finite float {'>= 0' if allow_zero else '> 0'} "
            "(uniform: the half-width a of [-a, a]; gaussian: the standard deviation). "
            f"Got {scale!r} instead."
        )
        raise InvalidParameterError(msg)
    return str(dist), float(scale)


def check_drawable(scale: float, func: str) -> None:
    """A scale whose draws stay finite (the perturbation draws them; the miners only use
    the variance, which they check themselves)."""
    if scale > _MAX_SCALE:
        msg = (
            f"The 'scale' parameter of {func} must be at most {_MAX_SCALE:.3g}: Gaussian draws reach 8.6 "
            f"standard deviations, and larger noise overflows float64 to infinity. Got {scale!r} instead."
        )
        raise InvalidParameterError(msg)
    if scale < _MIN_SCALE:
        msg = (
            f"The 'scale' parameter of {func} must be at least 2**-998 (~{_MIN_SCALE:.3g}): the released values "
            "are rounded to a grid 2**-24 of the scale, which has no float below that (their low bits would "
            f"then carry the originals'). Got {scale!r} instead."
        )
        raise InvalidParameterError(msg)


def noise_scales(
    dist: object, scale: object, columns: Sequence[str], func: str, *, allow_zero: bool = False
) -> dict[str, float]:
    """``scale`` spread over ``columns`` (one value, a sequence or a mapping), each checked."""
    spread = per_column("scale", scale, columns, func)
    return {c: check_noise(dist, spread[c], func, allow_zero=allow_zero)[1] for c in columns}


def noise_variances(
    dist: object, scale: object, columns: Sequence[str], func: str, *, allow_zero: bool = False
) -> dict[str, float]:
    """The variance of the noise on each column (as :func:`noise_scales` spreads ``scale``):
    ``scale^2`` (gaussian) or ``scale^2 / 3`` (uniform), refused by name when it, or its
    sum over the columns, is not a finite float (a scale above ~1e154)."""
    scales = noise_scales(dist, scale, columns, func, allow_zero=allow_zero)
    variances = {c: noise_std(str(dist), s) * noise_std(str(dist), s) for c, s in scales.items()}
    if not math.isfinite(sum(variances.values())):  # the miners add them up (inf, not an error)
        limit = math.sqrt(sys.float_info.max / len(columns)) * (math.sqrt(3.0) if dist == "uniform" else 1.0)
        msg = (
            f"The 'scale' parameter of {func} must be small enough that the noise variances "
            f"(gaussian: scale^2, uniform: scale^2 / 3) and their sum over the {len(columns)} columns "
            f"are finite floats: at most about {limit:.4g}. Got {scale!r} instead."
        )
        raise InvalidParameterError(msg)
    return variances


def noise_std(dist: str, scale: float) -> float:
    """Standard deviation of the noise: ``a / sqrt(3)`` (uniform) or sigma."""
    return scale / math.sqrt(3.0) if dist == "uniform" else scale


def add_noise_expr(
    expr: pl.Expr,
    *,
    dist: str = "gaussian",
    scale: float,
    secret: SecretLike = None,
    key: str | pl.Expr | None = None,
    stream: str | None = None,
) -> pl.Expr:
    """``x + r`` for a numeric expression (Float64 out; nulls stay null, NaN and
    infinities are refused).

    The noise of a row is keyed by its unit (``key``), the stream and its value (the
    float64 bits of ``x``), as RAPPOR's memoisation: each distinct value of a unit gets
    its own independent noise, so what one release protects is each distinct value.  A
    re-run over an unchanged value reproduces its noise (re-runs cannot be averaged
    away); a changed value gets fresh, independent noise (the change is not revealed
    exactly); a unit's rows share noise only when their values are equal.  A unit with m
    distinct values in the column releases m independently noised values (additive noise
    gives no epsilon; whatever it protects, it protects per distinct value).

    Parameters
    ----------
    expr : polars.Expr
        A numeric expression of each unit's own value.  Not an aggregate
        (``pl.col("x").sum()``): each row would draw its own noise on the one value, and
        the average of the copies is the value.  It is refused when the step is built (on
        Polars 1.34, which cannot tell, only where an eager query hands it over as one
        row); a literal (public) is repeated over the rows.  An aggregate already
        broadcast to every row (``.over(...)``, ``x.sum() + 0 * x``, ``pl.repeat``) cannot
        be told from a column of equal values: do not perturb one.
    dist : {'gaussian', 'uniform'}
        The noise distribution (public).
    scale : float
        > 0: the standard deviation (gaussian) or the half-width a of [-a, a] (uniform).
    secret, key
        As :func:`polars_ppdm.rr_disguise_expr`: the secret and the row key (the privacy
        unit; default the row position); the same key with the same value gets the same
        noise.
    stream : str, optional
        Stream label; default ``"add_noise/" + output name`` for a column, required for a
        computed expression (see :func:`polars_ppdm.rr_disguise_expr`).  The noise is
        drawn at the stream derived by ``dist`` and ``scale``: a release of the same value
        at another scale has independent noise (with shared noise, two scales would give
        the value back exactly).  The released ``x + r`` is rounded to a power-of-two grid
        ``2**-24`` of the scale (its low bits would otherwise rule candidate originals in
        or out).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"id": [1, 2, 3], "income": [10.0, None, 30.0]})
    >>> out = df.with_columns(pl.col("income").ppdm.add_noise(dist="uniform", scale=1.0, secret=7, key="id"))
    >>> out["income"].null_count(), bool((out["income"] - df["income"]).abs().max() <= 1.0)
    (1, True)

    Unit 1's unchanged income keeps its noise on a second night; unit 3's changed income
    gets fresh noise:

    >>> night2 = pl.DataFrame({"id": [1, 2, 3], "income": [10.0, None, 31.0]})
    >>> out2 = night2.with_columns(pl.col("income").ppdm.add_noise(dist="uniform", scale=1.0, secret=7, key="id"))
    >>> bool(out2["income"][0] == out["income"][0]), bool(out2["income"][2] - 31.0 != out["income"][2] - 30.0)
    (True, True)

    References
    ----------
    Agrawal, Srikant, SIGMOD 2000; Wen Han (2006), paper 003, chapter 4.
    """
    func = "add_noise"
    dist, scale = check_noise(dist, scale, func)
    check_drawable(scale, func)
    if stream is None:
        stream = default_stream(expr, func, "add_noise/")
    secret, word = resolve_secret(secret).key, stream_id(stream)
    draw = uniform_noise if dist == "uniform" else gaussian_noise
    keys = key_expr(key)
    shape = row_shape(expr, keys, func)

    def batch(inputs: Sequence[pl.Series]) -> pl.Series:
        values, keys = aligned(inputs[0], inputs[1], func, shape)
        if not values.dtype.is_numeric():
            msg = f"add_noise needs a numeric column. Got {values.name!r} of dtype {values.dtype} instead."
            raise InvalidParameterError(msg)
        x = values.cast(pl.Float64)
        nulls = x.null_count()
        # One float64 array of the values (nulls as 0.0, which draw noise nobody sees);
        # without nulls Polars' own buffer, not a copy.
        data = x.fill_null(0.0).to_numpy() if nulls else x.to_numpy()
        # min and max are NaN or infinite when any value is: two passes, no temporaries.
        if len(data) and not (math.isfinite(data.min()) and math.isfinite(data.max())):
            msg = f"add_noise: the column {values.name!r} holds NaN or infinite values; replace them or make them null."
            raise InvalidParameterError(msg)
        valid = x.is_not_null().to_numpy() if nulls else None
        unit_keys = row_keys(keys, secret=secret, func=func, required_rows=valid)
        noise = draw(secret, word, unit_keys, scale, values=data)
        noisy_values(data, noise, scale)  # x + r on the scale's grid, in place
        # Under a null, zeros: not the noise of the filler 0.0, nor the input's hidden value.
        return with_nulls(pl.Series(values.name, noise), valid)

    return pl.map_batches([expr, keys], batch, return_dtype=pl.Float64, is_elementwise=True)


def add_noise(
    frame: Frame,
    columns: str | Sequence[str],
    *,
    dist: str = "gaussian",
    scale: float | Sequence[float] | Mapping[str, float],
    secret: SecretLike = None,
    key: str | None = None,
) -> Frame:
    """:func:`add_noise_expr` on each named column (its own stream each; ``scale`` may
    be one per column, as a sequence or a mapping).  DataFrame in, DataFrame out; lazy
    stays lazy.

    The noise is keyed by (unit, column, value): each distinct value of a unit in a
    column gets independent noise, an unchanged value the same noise on every re-run
    (see :func:`add_noise_expr`).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"id": [1, 1, 2], "v": [5.0, 5.0, 7.0]})
    >>> out = ppdm.add_noise(df, "v", scale=1.0, secret=ppdm.Secret.for_tests(3), key="id")
    >>> bool(out["v"][0] == out["v"][1])  # one unit, one value: one noise
    True
    """
    func = "add_noise"
    schema = schema_of(frame, func)
    cols = check_columns(columns, list(schema.names()), func)
    check_numeric(schema, cols, func)
    if key is not None:
        check_columns([key], list(schema.names()), func, name="key")
    scales = noise_scales(dist, scale, cols, func)
    for value in scales.values():
        check_drawable(value, func)
    fresh = secret is None  # one call's secret: not kept registered (see rr_disguise)
    secret = resolve_secret(secret)
    key_dtype = pl.UInt64 if key is None else schema[key]
    exprs = []
    for c in cols:
        # The compiled plugin where it serves (an integer key), else map_batches: same bits.
        expr = None
        if plugin_key_dtype(key_dtype) and not fresh:
            expr = noise_plugin(
                pl.col(c),
                key_expr(key),
                gaussian=dist == "gaussian",
                scale=scales[c],
                secret=secret.key,
                stream=stream_id("add_noise/" + c),
            )
        if expr is None:
            expr = add_noise_expr(pl.col(c), dist=dist, scale=scales[c], secret=secret, key=key)
        exprs.append(expr.alias(c))
    with plugin_errors():
        return like(frame, as_lazy(frame).with_columns(exprs))
