"""Row-wise perturbations on Spark DataFrames: the Polars functions, batch by batch.

Each function checks its parameters on the driver against the frame's schema (the same
checks and messages as the Polars function, before any task runs), then hands every Arrow
batch to the Polars function of the same name through ``mapInArrow``.  Every draw is a
pure function of (secret, stream, row key), so the result does not depend on how the
rows are partitioned, on batch sizes, or on a task being retried on another executor:
it is bit for bit the Polars result.  The result is lazy, like any Spark transformation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_ppdm import perturb
from polars_ppdm._encoding import check_key_dtype
from polars_ppdm.perturb.spiral import SpiralKey
from polars_ppdm.secret import SecretLike, resolve_secret
from polars_ppdm.spark._engine import check_key, map_polars, polars_schema, spark_frame

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["add_noise", "apply_spiral_key", "invert_spiral_key", "rr_disguise"]


def _row_wise(
    frame: Any, func: str, operation: Callable[..., Any], *, row_key: str | None = None, **params: Any
) -> SparkFrame:
    """``operation`` (a Polars frame function) on every batch; ``row_key``: its ``key``
    parameter when the operation draws randomness (then required)."""
    sdf = spark_frame(frame, func)
    schema = polars_schema(sdf)
    if "key" not in params:
        params["key"] = name = check_key(row_key, schema, func)
        check_key_dtype(schema[name], name, func)
    # The Polars function on an empty frame of the same schema: every check it makes
    # before reading data runs here, on the driver, and its plan gives the output schema.
    out_schema = operation(pl.LazyFrame(schema=schema), **params).collect_schema()
    return map_polars(sdf, lambda batch: operation(batch, **params), out_schema, func)


def rr_disguise(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    secret: SecretLike = None,
    key: str | None = None,
    categories: Sequence[Any] | dict[str, Sequence[Any]] | None = None,
) -> SparkFrame:
    """:func:`polars_ppdm.rr_disguise` on a Spark DataFrame (per-attribute or whole-record,
    binary or k-ary), with the same bits as Polars for the same secret and keys.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Classic or Spark Connect.  Other columns are untouched; the row count is kept.
    columns, p, epsilon, mode, categories
        As in :func:`polars_ppdm.rr_disguise`.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        Resolved once, on the driver (``'env:NAME'`` reads the driver's environment), and
        shipped to the executors with the tasks.  None draws one fresh secret for the call.
    key : str
        Required: the row-key column (integer or string).  A Spark DataFrame has no row
        order, so there is no row position to fall back on.

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy: nothing runs until an action.  A key with nulls in rows that need a draw
        fails the action with the Polars message.

    References
    ----------
    Wen Han (2006), paper 003, chapter 5; Du & Zhan (KDD 2003); Rizvi & Haritsa (VLDB 2002).
    """
    return _row_wise(
        frame,
        "rr_disguise",
        perturb.rr_disguise,
        row_key=key,
        columns=columns,
        p=p,
        epsilon=epsilon,
        mode=mode,
        secret=resolve_secret(secret),
        categories=categories,
    )


def add_noise(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    dist: str = "gaussian",
    scale: float | Sequence[float] | Mapping[str, float],
    secret: SecretLike = None,
    key: str | None = None,
) -> SparkFrame:
    """:func:`polars_ppdm.add_noise` on a Spark DataFrame, with the same bits as Polars.

    ``key`` is required (see :func:`rr_disguise`); the other parameters are those of
    :func:`polars_ppdm.add_noise`.  The noised columns come back as doubles.

    References
    ----------
    Agrawal & Srikant (SIGMOD 2000); Huang, Du, Chen (SIGMOD 2005), paper 001.
    """
    return _row_wise(
        frame,
        "add_noise",
        perturb.add_noise,
        row_key=key,
        columns=columns,
        dist=dist,
        scale=scale,
        secret=resolve_secret(secret),
    )


def apply_spiral_key(frame: SparkFrame, key: SpiralKey) -> SparkFrame:
    """:func:`polars_ppdm.apply_spiral_key` on a Spark DataFrame.

    The transform is deterministic (the key holds every random choice), so it needs no
    row key; ``key`` here is the :class:`~polars_ppdm.SpiralKey`, made on a sample or from
    public bounds with :func:`polars_ppdm.spiral_key`.

    References
    ----------
    Log-spiral perturbation, paper 002.
    """
    return _row_wise(frame, "apply_spiral_key", perturb.apply_spiral_key, key=key)


def invert_spiral_key(frame: SparkFrame, key: SpiralKey) -> SparkFrame:
    """:func:`polars_ppdm.invert_spiral_key` on a Spark DataFrame: the data owner's way back."""
    return _row_wise(frame, "invert_spiral_key", perturb.invert_spiral_key, key=key)
