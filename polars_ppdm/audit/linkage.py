"""Rank linkage: how many released rows an attacker re-identifies from their rank vectors."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_ppdm._frame import eager, schema_of
from polars_ppdm._validation import check_columns
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["rank_linkage"]


def rank_linkage(
    original: pl.DataFrame | pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    on: str | None = None,
) -> float:
    """The share of released rows re-identified by matching rank vectors.

    The attacker knows, for the people in the original table, the order of their values
    in ``columns`` (not necessarily the values), computes the same ranks in the released
    table, and links each released row to the original row with the same rank vector,
    guessing uniformly among ties.  The share is the expected fraction of correct links.
    Rank re-linking (:func:`polars_ppdm.ecdf_resample` with ``link='rank'``) keeps every
    rank, so it scores 1 on continuous data whatever the released values; additive noise
    and ``link='none'`` score near 0 on large tables.

    Parameters
    ----------
    original, released : polars.DataFrame or polars.LazyFrame
        The table before and after perturbation.
    columns : str or sequence of str
        The perturbed columns the attacker ranks.
    on : str, optional
        A column identifying the row in both tables (for a shuffled release); default:
        the tables are aligned row by row.  Rows with a null in ``columns`` count as not
        re-identified.

    Examples
    --------
    >>> import polars as pl
    >>> orig = pl.DataFrame({"x": [3.0, 1.0, 2.0, 5.0]})
    >>> rank_linkage(orig, pl.DataFrame({"x": [30.0, 10.0, 20.0, 50.0]}), "x")
    1.0
    >>> rank_linkage(orig, pl.DataFrame({"x": [10.0, 30.0, 20.0, 50.0]}), "x")
    0.5
    """
    func = "rank_linkage"
    orig_schema, rel_schema = schema_of(original, func), schema_of(released, func)
    cols = check_columns(columns, list(orig_schema.names()), func)
    check_columns(cols, list(rel_schema.names()), func)
    original, released = eager(original), eager(released)
    if on is not None:
        check_columns([on], original.columns, func, name="on")
        check_columns([on], released.columns, func, name="on")
        released = original.select(on).join(released, on=on, how="left", maintain_order="left")
    if original.height != released.height:
        msg = f"{func} needs tables of the same height (or 'on'). Got {original.height} and {released.height} rows."
        raise InvalidParameterError(msg)
    if original.height == 0:
        msg = f"{func} needs at least one row."
        raise InvalidParameterError(msg)
    ranks = [pl.col(c).rank("average").alias(f"r{i}") for i, c in enumerate(cols)]
    names = [f"r{i}" for i in range(len(cols))]
    truth = original.select(ranks).with_row_index("row")
    seen = released.select(ranks).with_row_index("row")
    multiplicity = truth.drop_nulls(names).group_by(names).agg(pl.len().alias("m"))
    linked = (
        seen.join(truth, on="row", suffix="_true")
        .with_columns(
            same=pl.all_horizontal([pl.col(n) == pl.col(f"{n}_true") for n in names]).fill_null(False)
        )
        .join(multiplicity, on=names, how="left", maintain_order="left")
        .select((pl.col("same").cast(pl.Float64) / pl.col("m")).fill_null(0.0).mean())
    )
    return float(linked.item())
